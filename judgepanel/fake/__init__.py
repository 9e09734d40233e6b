"""The offline playground: a server speaking the OpenAI and Anthropic wire formats (`server`), with
their batch APIs (`batch`), prompt caching (`cache`) and logprobs (`logprobs`), answered by the
simulated judge (`judgepanel.simjudge`). Started by `judgepanel fake-server` and by the tests;
nothing else in the package imports it, and it imports nothing from `providers` but the wire
facts (`providers.wire`)."""
