"""LLM and human judges: the judge prompt, reply parsing, the judging loop, stored judgments."""
