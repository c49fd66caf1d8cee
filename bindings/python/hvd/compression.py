"""Gradient compression around allreduce (Horovod's Compression): the interface and the
compressor that every framework layer shares; each layer adds its own FP16Compressor."""


class Compressor:
    """compress(tensor) -> (tensor_to_send, ctx); decompress(tensor, ctx) -> tensor."""

    @staticmethod
    def compress(tensor):
        raise NotImplementedError

    @staticmethod
    def decompress(tensor, ctx):
        raise NotImplementedError


class NoneCompressor(Compressor):
    """Sends tensors as they are."""

    @staticmethod
    def compress(tensor):
        return tensor, None

    @staticmethod
    def decompress(tensor, ctx):
        return tensor
