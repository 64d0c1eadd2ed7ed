"""Kernels keep float32 inputs in float32 (the interpreter may run single precision)."""

import numpy as np

import crane.exec.kernels as K


def test_float32_stays_float32(rng: np.random.Generator) -> None:
    f = np.float32
    x = rng.standard_normal((2, 4, 6, 6)).astype(f)
    w = rng.standard_normal((4, 2, 3, 3)).astype(f)
    y = K.conv2d_forward(x, w, groups=2)
    outputs = [
        y,
        K.conv2d_backward_input(y, w, (2, 4, 6, 6), groups=2),
        K.conv2d_backward_weight(y, x, (4, 2, 3, 3), groups=2),
        K.max_pool2d_backward(K.max_pool2d_forward(x, kernel=(2, 2)), x, kernel=(2, 2)),
        K.avg_pool2d_forward(x, kernel=(3, 3), padding=(1, 1, 1, 1)),
        K.avg_pool2d_backward(x, (2, 4, 6, 6), kernel=(1, 1)),
        K.gelu_forward(x),
        K.gelu_backward(x, x, approximate=True),
        K.sigmoid_forward(x),
        K.batchnorm_forward_train(x, np.ones(4, f), np.zeros(4, f))[0],
        K.layernorm_forward(x, np.ones(6, f), np.zeros(6, f))[0],
        K.softmax_forward(x),
        K.softmax_cross_entropy(x.reshape(-1, 6), np.zeros(48, dtype=np.int64))[1],
        K.dropout_forward(x, 0.5, rng=rng)[0],
        K.adam_update(x, x, x, np.abs(x), step=2)[0],
        K.momentum_update(x, x, x, lr=0.1, momentum=0.9, nesterov=True)[0],
    ]
    assert [o.dtype for o in outputs] == [np.dtype(f)] * len(outputs)
