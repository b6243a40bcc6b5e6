"""Training a judge: its arguments, the loop, curricula (planned, loaded, run), the held-out split,
rule-rated synthetic stages, checkpoint averaging."""
