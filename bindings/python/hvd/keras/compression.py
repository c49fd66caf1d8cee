"""Gradient compression around allreduce (Horovod's Compression) on the tensors of
any Keras backend, through keras.ops."""
import keras

from ..compression import Compressor, NoneCompressor

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "Compression"]


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16, halving the bytes on the wire; the
    result is cast back to the original dtype."""

    @staticmethod
    def compress(tensor):
        dtype = keras.backend.standardize_dtype(tensor.dtype)
        if dtype in ("float32", "float64", "bfloat16"):
            return keras.ops.cast(tensor, "float16"), dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else keras.ops.cast(tensor, ctx)


class Compression:
    """Available compressors: Compression.none and Compression.fp16."""

    none = NoneCompressor
    fp16 = FP16Compressor
