"""CPU tensors laid out for the transfers: memory in 2 MiB pages.

MPI moves a large message between ranks of one machine by copying it out of the other
process page by page; from huge pages that runs 20-30% faster (docs/performance.md).
Linux gives huge pages only where asked (transparent huge pages in "madvise" mode), and
only to pages not yet touched, so the memory is advised (hvd_advise_host) before it is
filled.
"""
import torch

from .._capi import lib

_HUGE_PAGE = 2 << 20


def zeros_in_huge_pages(numel, dtype):
    """A 1-D CPU tensor of `numel` zeros of `dtype`; from 1 MiB up, its memory starts on
    a 2 MiB boundary and is backed by huge pages where the system allows (up to 2 MiB
    more is allocated to find the boundary). The tensor is a view of that allocation."""
    itemsize = torch.empty((), dtype=dtype).element_size()
    nbytes = numel * itemsize
    if nbytes < _HUGE_PAGE // 2:
        return torch.zeros(numel, dtype=dtype)
    whole = -(-nbytes // _HUGE_PAGE) * _HUGE_PAGE  # whole pages, the last one too
    raw = torch.empty((whole + _HUGE_PAGE) // itemsize, dtype=dtype)
    # torch aligns CPU memory to at least 64 bytes, so the skip is whole elements.
    skip = (-raw.data_ptr()) % _HUGE_PAGE // itemsize
    flat = raw[skip:skip + numel]
    lib.hvd_advise_host(flat.data_ptr(), whole, None)
    return flat.zero_()
