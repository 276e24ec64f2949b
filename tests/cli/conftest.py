import sys

import pytest

from sandbox.cli.main import main


def run_cli(capsys, *argv):
    """Run the CLI in-process: (exit code, stdout, stderr)."""
    with pytest.raises(SystemExit) as exc:
        sys.exit(main(list(argv)))
    out, err = capsys.readouterr()
    return exc.value.code, out, err
