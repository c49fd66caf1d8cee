"""hvd.allreduce(op=hvd.Adasum) on numpy arrays against adasum_reference.py: orthogonal
tensors add, parallel ones average, mixed ones match the reference, for every float
dtype, odd sizes, grouped and fused batches, scale factors, joined ranks and process
sets; a set whose size is not a power of two fails on every rank alike, and so do
integer dtypes (reducescatter's refusal is in test_errors.py)."""
import numpy as np
import pytest

import hvd
from adasum_reference import (adasum, is_power_of_two, power_of_two_set,
                              relative_error)

pytestmark = pytest.mark.usefixtures("world")

# Tolerance on relative_error per dtype: a few roundings per level of the tree.
TOL = {"float16": 4e-3, "bfloat16": 3e-2, "float32": 2e-6, "float64": 1e-12}
SIZES = [1, 7, 33, 1001]


def power_of_two_world():
    if not is_power_of_two(hvd.size()):
        pytest.skip("Adasum needs a power-of-two number of ranks")


def to_bf16_bits(values):
    """float -> bfloat16 bits, rounding to nearest even."""
    bits = np.asarray(values, np.float32).view(np.uint32).astype(np.uint64)
    return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)


def from_bf16_bits(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


def as_dtype(values, dtype):
    """(array to send, its values as float64, dtype= argument) for a dtype name."""
    if dtype == "bfloat16":
        bits = to_bf16_bits(values)
        return bits, from_bf16_bits(bits).astype(np.float64), hvd.bfloat16
    array = np.asarray(values).astype(dtype)
    return array, array.astype(np.float64), None


def as_float64(out, dtype):
    return from_bf16_bits(out).astype(np.float64) if dtype == "bfloat16" else \
        out.astype(np.float64)


def mixed(r, n, seed=0):
    """Rank r's tensor: a component every rank shares plus one of its own."""
    shared = np.random.default_rng(seed).standard_normal(n)
    own = np.random.default_rng(seed + 100 + r).standard_normal(n)
    return shared + (0.5 + r) * own


def check_allreduce(inputs, dtype, name, **kwargs):
    """Allreduces this rank's entry of `inputs` (float64, one per rank) as `dtype` and
    checks the result against the reference of the inputs as that dtype holds them."""
    sent = [as_dtype(t, dtype) for t in inputs]
    array, _, dtype_arg = sent[hvd.rank()]
    out = hvd.allreduce(array, op=hvd.Adasum, name=name, dtype=dtype_arg, **kwargs)
    assert out.shape == array.shape and out.dtype == array.dtype
    expected = adasum([s[1] for s in sent])
    err = relative_error(as_float64(out, dtype), expected, [s[1] for s in sent])
    assert err < TOL[dtype], f"{name}: relative error {err:.2e}"
    return out


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("n", SIZES)
def test_orthogonal_tensors_add(dtype, n):
    power_of_two_world()
    # Rank r owns the elements r, r + size, ...: every pair along the tree is orthogonal.
    inputs = []
    for r in range(hvd.size()):
        t = np.zeros(n)
        t[r::hvd.size()] = np.arange(1, len(t[r::hvd.size()]) + 1) * (r + 1) / 8
        inputs.append(t)
    out = check_allreduce(inputs, dtype, f"ada.orth.{dtype}.{n}")
    # Coefficients of exactly 1 and one nonzero per element: the exact sum.
    held = [as_dtype(t, dtype)[1] for t in inputs]
    np.testing.assert_array_equal(as_float64(out, dtype), np.sum(held, axis=0))


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("n", SIZES)
def test_parallel_tensors_average(dtype, n):
    power_of_two_world()
    direction = np.random.default_rng(7).standard_normal(n)
    inputs = [direction * (1 + r) for r in range(hvd.size())]
    out = check_allreduce(inputs, dtype, f"ada.par.{dtype}.{n}")
    mean = np.mean([as_dtype(t, dtype)[1] for t in inputs], axis=0)
    assert relative_error(as_float64(out, dtype), mean, inputs) < TOL[dtype]


@pytest.mark.parametrize("dtype", list(TOL))
@pytest.mark.parametrize("n", SIZES)
def test_mixed_tensors_match_the_reference(dtype, n):
    power_of_two_world()
    check_allreduce([mixed(r, n) for r in range(hvd.size())], dtype, f"ada.mix.{dtype}.{n}")


def test_mixed_is_neither_sum_nor_average():
    power_of_two_world()
    if hvd.size() == 1:
        pytest.skip("one rank: Adasum is the identity")
    inputs = [mixed(r, 64) for r in range(hvd.size())]
    out = check_allreduce(inputs, "float64", "ada.neither")
    assert not np.allclose(out, np.sum(inputs, axis=0))
    assert not np.allclose(out, np.mean(inputs, axis=0))


def test_zero_and_tiny_tensors_count_as_zero():
    power_of_two_world()
    # A zero tensor's coefficient is 1 and it adds nothing; so does one whose norm
    # squared is below sqrt(DBL_MIN), whatever the others are.
    for scale, name in [(0.0, "zero"), (1e-160, "tiny")]:
        inputs = [mixed(r, 9) * (scale if r % 2 else 1.0) for r in range(hvd.size())]
        check_allreduce(inputs, "float64", f"ada.{name}")


def test_in_place_and_multidimensional():
    power_of_two_world()
    inputs = [mixed(r, 24).reshape(2, 3, 4) for r in range(hvd.size())]
    array = inputs[hvd.rank()].copy()
    assert hvd.allreduce_(array, op=hvd.Adasum, name="ada.inplace") is array
    assert relative_error(array, adasum(inputs), inputs) < TOL["float64"]


@pytest.mark.parametrize("dtype", ["float16", "bfloat16", "float32", "float64"])
def test_grouped_members_have_their_own_coefficients(dtype):
    power_of_two_world()
    # Orthogonal, parallel and mixed members in one group (one fused buffer): each is
    # combined with its own dot products and norms, not the concatenation's.
    size, me = hvd.size(), hvd.rank()
    direction = np.random.default_rng(3).standard_normal(5)
    members = [
        [np.eye(size * 3)[r::size].sum(axis=0) for r in range(size)],
        [direction * (r + 1) for r in range(size)],
        [mixed(r, 1001, seed=5) for r in range(size)],
        [mixed(r, 1, seed=6) for r in range(size)],
    ]
    sent = [[as_dtype(t, dtype) for t in m] for m in members]
    outs = hvd.grouped_allreduce([s[me][0] for s in sent], op=hvd.Adasum,
                                 name=f"ada.group.{dtype}", dtype=sent[0][me][2])
    for i, (s, out) in enumerate(zip(sent, outs)):
        expected = adasum([x[1] for x in s])
        err = relative_error(as_float64(out, dtype), expected, [x[1] for x in s])
        assert err < TOL[dtype], f"member {i}: relative error {err:.2e}"


def test_async_batch_is_fused_with_per_tensor_coefficients():
    power_of_two_world()
    me = hvd.rank()
    batches = [[mixed(r, n, seed=n) for r in range(hvd.size())] for n in (3, 17, 256, 2)]
    batches.append([np.eye(hvd.size() * 2)[r] for r in range(hvd.size())])
    handles = [hvd.allreduce_async(b[me], op=hvd.Adasum, name=f"ada.async.{i}")
               for i, b in enumerate(batches)]
    for b, h in zip(batches, handles):
        assert relative_error(hvd.synchronize(h), adasum(b), b) < TOL["float64"]


@pytest.mark.parametrize("prescale,postscale", [(0.5, 1.0), (1.0, 3.0), (0.25, -2.0)])
def test_scale_factors(prescale, postscale):
    power_of_two_world()
    inputs = [mixed(r, 40) for r in range(hvd.size())]
    out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Adasum, name=f"ada.scale.{postscale}",
                        prescale_factor=prescale, postscale_factor=postscale)
    expected = adasum([t * prescale for t in inputs]) * postscale
    assert relative_error(out, expected, inputs) < TOL["float64"]


def test_prescale_applies_before_the_combination():
    power_of_two_world()
    if hvd.size() == 1:
        pytest.skip("one rank: nothing is combined")
    # Scaled below sqrt(DBL_MIN) in norm squared, the tensors count as zero: they are
    # summed, not combined by their geometry (a postscale alone would not do that).
    inputs = [mixed(r, 16) * 1e-70 for r in range(hvd.size())]
    out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Adasum, name="ada.prescale.tiny",
                        prescale_factor=1e-20, postscale_factor=1e20)
    np.testing.assert_allclose(out, np.sum(inputs, axis=0), rtol=1e-12)


def test_joined_rank_contributes_zeros():
    power_of_two_world()
    if hvd.size() == 1:
        pytest.skip("needs 2 ranks")
    inputs = [mixed(r, 12) for r in range(hvd.size())]
    last = hvd.size() - 1
    if hvd.rank() == last:
        hvd.join()
    else:
        out = hvd.allreduce(inputs[hvd.rank()], op=hvd.Adasum, name="ada.joined")
        expected = adasum(inputs[:last] + [np.zeros(12)])
        assert relative_error(out, expected, inputs) < TOL["float64"]
        hvd.join()


def test_power_of_two_process_set():
    # Any set of 1, 2, 4... ranks, also inside a job of another size (Horovod allows
    # only the global set).
    with power_of_two_set(hvd) as (members, ps):
        if hvd.rank() in members:
            inputs = [mixed(r, 21) for r in members]
            out = hvd.allreduce(inputs[members.index(hvd.rank())], op=hvd.Adasum,
                                name="ada.set", process_set=ps)
            assert relative_error(out, adasum(inputs), inputs) < TOL["float64"]


def test_non_power_of_two_fails_on_every_rank():
    if is_power_of_two(hvd.size()):
        pytest.skip("needs a number of ranks that is not a power of two")
    with pytest.raises(NotImplementedError) as info:
        hvd.allreduce(np.ones(5), op=hvd.Adasum, name="ada.npot")
    assert isinstance(info.value, hvd.UnsupportedError)
    text = str(info.value)
    assert "power-of-two" in text and str(hvd.size()) in text
    assert "hvd.Adasum" in text and "HVD_" not in text
    with pytest.raises(NotImplementedError):
        hvd.grouped_allreduce([np.ones(2), np.ones(3)], op=hvd.Adasum, name="ada.npot.group")
    # Nothing is left in flight: the next collective pairs up as usual.
    out = hvd.allreduce(np.ones(2), op=hvd.Sum, name="ada.npot.after")
    np.testing.assert_array_equal(out, np.full(2, float(hvd.size())))


def test_integer_dtypes_are_invalid_on_every_rank():
    for dtype in (np.int32, np.int64, np.uint8, np.bool_):
        with pytest.raises(ValueError) as info:
            hvd.allreduce(np.ones(3, dtype), op=hvd.Adasum, name=f"ada.int.{dtype.__name__}")
        assert isinstance(info.value, hvd.InvalidArgumentError)
        assert "hvd.Adasum" in str(info.value) and "HVD_" not in str(info.value)

