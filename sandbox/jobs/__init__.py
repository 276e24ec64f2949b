"""The compute jobs and what crosses to and from them: plain requests in, plain results out, no Qt."""
