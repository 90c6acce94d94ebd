"""The LLM judge: any OpenAI-compatible model as a verifier, never trusted unchecked.

- `config`: `JudgeConfig`, the endpoint and how to use it (never the key).
- `client`: `JudgeClient`, the `openai` SDK with structured-output fallback and error mapping.
- `prompts`: the three task prompts (sentences, citations, claims), versioned by hash.
- `schema`: the items sent and the reply models whose JSON schema is the response format.
- `validate`: every reply checked (completeness, enums, ranges, ids, verbatim excerpts).
- `harness`: the ask / validate / re-ask loop, at most three attempts, with the call log.
- `handler`: `JudgeModelHandler`, a Beam `RemoteModelHandler` for `RunInference`.
- `verifier`: `JudgeVerifier` ("openai") and `CascadeVerifier` ("cascade").

Import the submodule you need; this package imports nothing eagerly.
"""

__all__: list[str] = []
