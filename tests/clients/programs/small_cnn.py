"""A small convolutional classifier trained by SGD, written with lax directly as the JAX
"Stax/lax" tutorials do: NHWC images, HWIO kernels, lax.conv_general_dilated with 'SAME' and
'VALID' padding and a strided layer, max pooling and average pooling through lax.reduce_window,
ReLU, a dense head and softmax cross-entropy; two jitted SGD steps, then per-example gradients
from vmap(grad) over the batch. Batch 4 of 8x8x2 images, 3 classes."""

import jax
import jax.numpy as jnp
from jax import grad, jit, lax, random, vmap
from jax.nn import log_softmax, one_hot, relu

RTOL, ATOL = 2e-4, 2e-5
JAX_REFERENCE_UNDER_JIT = True  # (the test's JAX run: jax.jit(main), one XLA compile)
DN = ("NHWC", "HWIO", "NHWC")


def init(key):
    k1, k2, k3 = random.split(key, 3)
    return {
        "c1": random.normal(k1, (3, 3, 2, 4)) * 0.3,
        "c2": random.normal(k2, (2, 2, 4, 6)) * 0.3,
        "b2": jnp.zeros(6),
        "dense": random.normal(k3, (6, 3)) * 0.3,
    }


def max_pool(x):
    return lax.reduce_window(x, -jnp.inf, lax.max, (1, 2, 2, 1), (1, 2, 2, 1), "VALID")


def avg_pool(x):
    summed = lax.reduce_window(x, 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME")
    counts = lax.reduce_window(jnp.ones_like(x), 0.0, lax.add, (1, 2, 2, 1), (1, 1, 1, 1), "SAME")
    return summed / counts


def forward(params, images):
    h = lax.conv_general_dilated(images, params["c1"], (1, 1), "SAME", dimension_numbers=DN)
    h = max_pool(relu(h))  # (B, 4, 4, 4)
    h = lax.conv_general_dilated(h, params["c2"], (2, 2), "VALID", dimension_numbers=DN)
    h = avg_pool(relu(h + params["b2"]))  # (B, 2, 2, 6)
    return jnp.mean(h, axis=(1, 2)) @ params["dense"]


def loss(params, images, labels):
    logp = log_softmax(forward(params, images))
    return -jnp.mean(jnp.sum(one_hot(labels, 3) * logp, axis=-1))


@jit
def sgd_step(params, images, labels):
    g = grad(loss)(params, images, labels)
    return jax.tree_util.tree_map(lambda p, d: p - 0.5 * d, params, g), loss(params, images, labels)


def main():
    kp, kx, ky = random.split(random.PRNGKey(11), 3)
    params = init(kp)
    images = random.normal(kx, (4, 8, 8, 2))
    labels = random.randint(ky, (4,), 0, 3)
    losses = []
    for _ in range(2):
        params, value = sgd_step(params, images, labels)
        losses.append(value)

    def example_grad(image, label):
        return grad(loss)(params, image[None], label[None])

    per_example = vmap(example_grad)(images, labels)
    return {
        "losses": losses,
        "params": params,
        "logits": forward(params, images),
        "per_example": per_example,
    }
