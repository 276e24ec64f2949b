import pytest

from core.models.source import load_model, shipped_unavailable_reason


def _load(name):
    reason = shipped_unavailable_reason(name)
    if reason:
        pytest.skip(reason)
    return load_model(name)


@pytest.fixture(scope="session")
def smollm2():
    return _load("smollm2-135m")


@pytest.fixture(scope="session")
def minilm():
    return _load("minilm-l6")


@pytest.fixture(params=["smollm2", "minilm"])
def model(request):
    return request.getfixturevalue(request.param)


def copy_folder(src, dst, skip=()):
    """A copy of a model folder, less the files named in skip: the start of every damaged folder."""
    dst.mkdir()
    for f in src.iterdir():
        if f.name not in skip:
            (dst / f.name).write_bytes(f.read_bytes())
    return dst
