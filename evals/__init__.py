"""askdocs evaluation suite: labelled cases, runner, metrics, CI gate (see evals/README.md)."""
