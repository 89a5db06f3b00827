"""Analytic models around the engine: what a step costs, what serving many sequences takes, real models' shapes.

    costs         FLOPs and bytes of prefill and decode steps, KV cache sizes
    serving       batches, paged slots, requests that fit on a GPU
    model_shapes  real model shapes (Llama 3 8B/70B, Llama 2 7B, Mistral 7B v0.1, GPT-2)
    scheduler     the serving scheduler (when present)
"""
