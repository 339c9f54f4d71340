"""Every kernel source compiles with nvcc for sm_80 and sm_90 (CPU machines included)."""

import re
from pathlib import Path

import pytest

from pufferbox.cuda.build import CORE_SOURCE, CompileError, assemble, compile_check, find_nvcc

NVCC = find_nvcc()
needs_nvcc = pytest.mark.skipif(NVCC is None, reason="nvcc not found on PATH, $CUDA_HOME/bin or /usr/local/cuda/bin")


def kernel_texts():
    from pufferbox_warp.plugin import CARTPOLE, TAG, TAG_CONTINUOUS

    yield "core", assemble(CORE_SOURCE.read_text(), {})
    for label, impl, kwargs in [
        ("tag-full", TAG, {}),
        ("tag-knearest", TAG, {"k_nearest": 3, "num_runners": 10}),
        ("tag-knearest-cell-index", TAG, {"k_nearest": 5, "num_runners": 990, "num_taggers": 10}),
        ("tag-continuous-full", TAG_CONTINUOUS, {}),
        ("tag-continuous-knearest", TAG_CONTINUOUS, {"k_nearest": 4, "num_runners": 40}),
        ("cartpole", CARTPOLE, {}),
    ]:
        ref = impl.reference_class()(num_envs=4, **kwargs)
        # Quoted includes resolve from the source's own folder first, as in the runtime.
        yield (
            label,
            assemble(
                impl.source_text() + f'\n#include "{CORE_SOURCE.name}"\n',
                ref.constants(),
                search=(Path(impl.source).parent,),
            ),
        )


@needs_nvcc
@pytest.mark.parametrize("arch", ["sm_80", "sm_90"])
def test_every_kernel_compiles(arch):
    for label, text in kernel_texts():
        ptx = compile_check(text, arch=arch, output="ptx").decode()
        assert ".entry" in ptx, label
        # Bit-exact with the numpy references only if nothing is fused or approximated.
        inexact = set(re.findall(r"\b(fma\.\S+|\S+\.approx\.\S+|div\.full\.\S+|mad\.\S+\.f32)", ptx))
        assert not inexact, (label, inexact)


@needs_nvcc
def test_compile_errors_carry_nvcc_diagnostics():
    with pytest.raises(CompileError, match="undeclared|identifier"):
        compile_check('extern "C" __global__ void k() { undefined_thing = 1; }', arch="sm_90")


def test_constants_are_exact_float32_literals():
    text = assemble("", {"A": 0.1, "N": 3, "B": True})
    assert "#define A 0x1.99999a0000000p-4f" in text and "#define N 3" in text and "#define B 1" in text


def test_quoted_includes_resolve_beside_the_including_file_first(tmp_path):
    """A game header that includes a sibling header (tetris_place.h includes tetris.h) builds as a C
    compiler would build it; each file is inlined once."""
    (tmp_path / "game").mkdir()
    (tmp_path / "game" / "base.h").write_text("int base_rule;\n")
    (tmp_path / "game" / "variant.h").write_text('#include "base.h"\nint variant_rule;\n')
    text = assemble(f'#include "{tmp_path / "game" / "variant.h"}"\n#include "{tmp_path / "game" / "base.h"}"\n', {})
    assert text.count("int base_rule;") == 1 and "int variant_rule;" in text
    with pytest.raises(CompileError, match='#include "missing.h" not found'):
        assemble('#include "missing.h"\n', {})


@pytest.mark.parametrize("comment", [" // the base rules", " /* the base rules */"])
def test_an_include_with_a_trailing_comment_is_inlined(tmp_path, comment):
    (tmp_path / "base.h").write_text("int base_rule;\n")
    text = assemble(f'#include "{tmp_path / "base.h"}"{comment}\nint variant_rule;\n', {})
    assert "int base_rule;" in text and "#include" not in text
