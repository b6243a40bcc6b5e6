"""`openai-audio-chat`: the client, its HTTP retries, the request payloads and the reply cache."""
