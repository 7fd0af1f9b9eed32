"""arrax.experimental.rnn (`jax.experimental.rnn`): the cuDNN-layout LSTM, computed by its
reference recurrence (arrax has no cuDNN kernels)."""
from arrax._src.rnn import (
    get_num_params_in_lstm as get_num_params_in_lstm,
    init_lstm_weight as init_lstm_weight,
    lstm as lstm,
    lstm_bwd as lstm_bwd,
    lstm_fwd as lstm_fwd,
    lstm_ref as lstm_ref,
    sigmoid as sigmoid,
    swap_lstm_gates as swap_lstm_gates,
    tanh as tanh,
    unpack_lstm_weights as unpack_lstm_weights,
    PRNGKeyArray as PRNGKeyArray,
)
