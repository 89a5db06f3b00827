"""Training the course model: python -m engine.training.train (NumPy, hand-written backward pass, AdamW).

    train   the loop and the command line      grad    the backward pass
    adam    AdamW                               corpus  the training text and plate 3's word groups
"""
