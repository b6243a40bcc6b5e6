"""Training a judge: the loop, curricula, rule-rated synthetic stages, checkpoint averaging."""
