"""Gradient compression applied around allreduce (Horovod's Compression), for tf.Tensor."""
import tensorflow as tf

from ..compression import Compressor, NoneCompressor

__all__ = ["Compressor", "NoneCompressor", "FP16Compressor", "Compression"]


class FP16Compressor(Compressor):
    """Sends floating-point tensors as float16, halving the bytes on the wire; the
    result is cast back to the original dtype."""

    @staticmethod
    def compress(tensor):
        if tensor.dtype.is_floating and tensor.dtype != tf.float16:
            return tf.cast(tensor, tf.float16), tensor.dtype
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor if ctx is None else tf.cast(tensor, ctx)


class Compression:
    """Available compressors: Compression.none and Compression.fp16."""

    none = NoneCompressor
    fp16 = FP16Compressor
