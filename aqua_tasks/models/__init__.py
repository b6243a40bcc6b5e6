"""The models a run can use: baselines and replay, the Hugging Face audio LM, the API client."""
