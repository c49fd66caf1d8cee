"""A tensor name is what the caller wrote, or a refusal on every rank. A name holding
NUL would reach libhvd cut there ("x\\0A" and "x\\0B" both "x", two tensors reduced as
one); a name that is not UTF-8 (a str with a lone surrogate, bytes that do not decode)
could not be encoded at all. Either raises ValueError naming `name` on the rank that
passed it, and the peers' call of that name fails at once with MismatchError instead of
waiting: a name with NUL is announced as far as the NUL, one that is not UTF-8 with
U+FFFD for each bad byte (the text a UTF-8 decoder makes of it). The name then works
again on every rank. Through hvd, hvd.torch's C fast path and the horovod stand-in;
the last rank passes the bad name."""
import numpy as np
import pytest
import torch

import horovod.torch as hvt
import hvd
import hvd.torch as ht

pytestmark = pytest.mark.usefixtures("world")


def refusing():
    return hvd.rank() == hvd.size() - 1


def assert_refused_here(info, what):
    text = str(info.value)
    assert "name" in text and what in text, text


def assert_peer_refused(info, name):
    text = str(info.value)
    assert name in text and f"rank {hvd.size() - 1} refused" in text, text


# (the refusing rank's name, the peers' name, what the ValueError says)
BAD_NAMES = [
    pytest.param("py.names.nul\0A", "py.names.nul", "NUL", id="nul"),
    pytest.param("py.names.sur\udcff", "py.names.sur\ufffd", "UTF-8", id="surrogate"),
    pytest.param(b"py.names.bytes\xff", "py.names.bytes\ufffd", "UTF-8", id="bytes"),
]


def sum_works(call, name):
    out = call(name)
    assert float(out.sum()) == 3.0 * hvd.size(), out


@pytest.mark.parametrize("bad, good, what", BAD_NAMES)
def test_numpy_allreduce(bad, good, what):
    call = lambda name: hvd.allreduce(np.ones(3), op=hvd.Sum, name=name)  # noqa: E731
    if refusing():
        with pytest.raises(ValueError) as info:
            call(bad)
        assert_refused_here(info, what)
    else:
        with pytest.raises(hvd.MismatchError) as info:
            call(good)
        assert_peer_refused(info, good)
    sum_works(call, good)


@pytest.mark.parametrize("bad, good, what", BAD_NAMES)
def test_torch_allreduce_async_in_place(bad, good, what):
    # hvd.torch's allreduce_async_ is the C fast path where it is built.
    def call(name):
        return ht.synchronize(ht.allreduce_async_(torch.ones(3), op=hvd.Sum, name=name))
    if refusing():
        with pytest.raises(ValueError) as info:
            call(bad)
        assert_refused_here(info, what)
    else:
        with pytest.raises(hvd.MismatchError) as info:
            call(good)
        assert_peer_refused(info, good)
    sum_works(call, good)


@pytest.mark.parametrize("bad, good, what", BAD_NAMES)
def test_horovod_torch_allreduce_and_broadcast(bad, good, what):
    reduce = lambda name: hvt.allreduce(torch.ones(3), op=hvt.Sum, name=name)  # noqa: E731
    bcast_name = good + ".bcast"
    if refusing():
        with pytest.raises(ValueError) as info:
            reduce(bad)
        assert_refused_here(info, what)
        bad_bcast = bad + (b".bcast" if isinstance(bad, bytes) else ".bcast")
        if what == "NUL":
            bad_bcast = bcast_name + "\0weight"
        with pytest.raises(ValueError) as info:
            hvt.broadcast(torch.ones(3), 0, name=bad_bcast)
        assert_refused_here(info, what)
    else:
        with pytest.raises(hvd.MismatchError) as info:
            reduce(good)
        assert_peer_refused(info, good)
        with pytest.raises(hvd.MismatchError) as info:
            hvt.broadcast(torch.ones(3), 0, name=bcast_name)
        assert_peer_refused(info, bcast_name)
    sum_works(reduce, good)
    out = hvt.broadcast(torch.full((3,), float(hvd.rank())), 0, name=bcast_name)
    assert torch.equal(out, torch.zeros(3))


def test_names_cut_at_nul_on_every_rank_are_all_refused():
    # Each rank's own name after the NUL: "p\0weight" and "p\0bias" must never meet as "p".
    name = "py.names.p\0" + ("weight" if hvd.rank() % 2 == 0 else "bias")
    with pytest.raises(ValueError, match="NUL"):
        hvd.broadcast(np.full(3, float(hvd.rank())), 0, name=name)
    with pytest.raises(ValueError, match="NUL"):
        ht.allreduce(torch.ones(2), name=name)
    out = hvd.broadcast(np.full(3, float(hvd.rank())), 0, name="py.names.q")
    np.testing.assert_array_equal(out, np.zeros(3))


def test_bytes_and_other_names_name_the_same_tensor_as_their_text():
    # bytes are UTF-8 text; anything else is str(name).
    names = ["py.names.é", "py.names.é".encode(), 12345] if refusing() else \
        ["py.names.é", "py.names.é", "12345"]
    for name in names:
        out = hvd.allreduce(np.ones(2), op=hvd.Sum, name=name)
        np.testing.assert_array_equal(out, np.full(2, float(hvd.size())))
