"""Runs one of Horovod's example scripts, unchanged, with generated data in place of
the datasets it would download (there may be no internet where the examples are
checked): keras.datasets.mnist.load_data() returns random images of
--image-size pixels a side (small by default, so that the examples' thousands of
steps take seconds on a CPU) and random labels 0-9. Everything after the example's
path is the example's own argument list.

    python run_example.py [--image-size N] [--samples N] EXAMPLE.py [EXAMPLE ARGS...]
"""
import argparse
import runpy
import sys


def generated_mnist(image_size, samples):
    import numpy as np

    def load_data(path="mnist.npz"):
        rng = np.random.default_rng(0)
        shape = (samples, image_size, image_size)
        train = (rng.integers(0, 256, shape, dtype=np.uint8),
                 rng.integers(0, 10, samples, dtype=np.uint8))
        test = (train[0][: samples // 10], train[1][: samples // 10])
        return train, test
    return load_data


def patch_datasets(image_size, samples):
    """Every module path a script may reach mnist.load_data() through."""
    import importlib
    load_data = generated_mnist(image_size, samples)
    for module in ("keras.src.datasets.mnist", "keras.datasets.mnist",
                   "keras._tf_keras.keras.datasets.mnist"):
        try:
            importlib.import_module(module).load_data = load_data
        except ImportError:
            pass
    try:
        import tensorflow as tf
        tf.keras.datasets.mnist.load_data = load_data
    except (ImportError, AttributeError):
        pass


def main():
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--image-size", type=int, default=8,
                        help="pixels a side of the generated MNIST images (default 8)")
    parser.add_argument("--samples", type=int, default=2048,
                        help="generated training images (default 2048)")
    parser.add_argument("example", help="the example script")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="the example's arguments")
    options = parser.parse_args()
    patch_datasets(options.image_size, options.samples)
    sys.argv = [options.example] + options.args
    runpy.run_path(options.example, run_name="__main__")


if __name__ == "__main__":
    main()
