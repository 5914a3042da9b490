"""NoisyToolBench (Wang et al., "Learning to Ask", EMNLP 2025) in deskbench.

:mod:`harness.ntb.cases` loads the 200 shipped cases and holds the ToolBench naming rules, the
OpenAI tool schemas and the argument normalisation shared by the environment and the scorers;
:mod:`harness.ntb.apienv` is the offline API environment (recorded responses, response
examples, templates, an optional LLM simulator). The method is restated in
``harness/data/noisytoolbench/SOURCE.md`` and the project's NoisyToolBench documentation.
"""
