"""arrax.numpy"""
