"""ORCA: a learned judge of open-ended answers that predicts the distribution of human ratings."""
