"""Checks on the bundled accelerator table (catalog/accelerators.csv).

Validates the file on its own (systems/offers may not exist yet), so it uses the row-level
helpers rather than load_catalog().
"""

from __future__ import annotations

from pathlib import Path

import pytest

import planner.data.catalog as catalog

CSV_PATH = Path(__file__).resolve().parent.parent / "catalog" / "accelerators.csv"

REQUIRED_IDS = {
    "rtx-4090", "rtx-5090", "rtx-6000-ada", "rtx-pro-6000", "a6000", "l4", "l40s", "a10g",
    "a100-40gb", "a100-80gb", "a100-80gb-pcie", "h100-sxm", "h100-pcie", "h100-nvl", "h200-sxm", "h200-nvl",
    "gh200", "h20", "b200", "b300", "gb200", "gb300", "mi300x", "mi325x", "mi355x",
    "gaudi2", "gaudi3", "tpu-v5e", "tpu-v5p", "tpu-v6e", "tpu-v7", "trainium2", "trainium3",
    "inferentia2", "jetson-agx-thor", "dgx-spark", "m3-ultra",
}

# Chips whose vendor documents a dense FP8 rate more than 2x BF16. Trainium3: 2,517 MXFP8 vs
# 671 BF16 TFLOPS (awsdocs-neuron trainium3.rst); both are dense figures, not sparse ones.
FP8_OVER_BF16_EXCEPTIONS = {"trainium3"}


@pytest.fixture(scope="module")
def accels():
    return catalog._validate_rows("accelerators", catalog._read_rows(CSV_PATH), CSV_PATH)


def test_all_required_ids_present(accels):
    missing = REQUIRED_IDS - set(accels)
    assert not missing, f"missing accelerator ids: {sorted(missing)}"
    assert len(accels) == len(REQUIRED_IDS) == 37  # a100-80gb-pcie split from the SXM row (issue 13)


def test_header_is_exact():
    lines = [ln for ln in CSV_PATH.read_text(encoding="utf-8").splitlines() if not ln.startswith("#")]
    assert lines[0] == (
        "id,name,vendor,memory_gb,mem_bw_tbps,bf16_tflops,fp8_tflops,fp4_tflops,int8_tops,tdp_w,"
        "scaleup_kind,scaleup_gbps,scaleup_domain,stack,cooling,form_factor,mamf_bf16_fraction,source,as_of"
    )


def test_every_row_has_source_and_as_of(accels):
    for a in accels.values():
        assert a.source and len(a.source.strip()) >= 3, a.id
        assert a.as_of is not None, a.id


def test_scaleup_kind_is_known(accels):
    allowed = {"nvlink", "nvlink-bridge", "infinity-fabric", "pcie", "ici", "neuronlink", "roce", "none"}
    for a in accels.values():
        assert a.scaleup_kind in allowed, (a.id, a.scaleup_kind)


def test_dense_reference_figures(accels):
    assert accels["h100-sxm"].bf16_tflops == pytest.approx(989)
    assert accels["b200"].bf16_tflops == pytest.approx(2250)
    assert accels["mi355x"].fp8_tflops == pytest.approx(5000, rel=0.05)
    assert accels["h200-sxm"].memory_gb == pytest.approx(141)
    assert accels["h200-sxm"].mem_bw_tbps == pytest.approx(4.8)


def test_no_fp8_speedup_left_null(accels):
    # Ampere has no FP8 tensor path; Hopper has no FP4; TPU v5p runs FP8 at the BF16 rate.
    assert accels["a100-80gb"].fp8_tflops is None
    assert accels["h100-sxm"].fp4_tflops is None
    assert accels["tpu-v5p"].fp8_tflops is None


def test_fp8_not_sparse(accels):
    """fp8 > 2.2x bf16 almost always means a 2:4-sparse figure slipped in next to a dense one."""
    for a in accels.values():
        if a.id in FP8_OVER_BF16_EXCEPTIONS or a.bf16_tflops is None or a.fp8_tflops is None:
            continue
        assert a.fp8_tflops <= 2.2 * a.bf16_tflops, (a.id, a.bf16_tflops, a.fp8_tflops)


def test_precision_ladder_is_monotonic(accels):
    for a in accels.values():
        ladder = [v for v in (a.bf16_tflops, a.fp8_tflops, a.fp4_tflops) if v is not None]
        assert ladder == sorted(ladder), (a.id, ladder)


def test_rack_scale_parts_are_per_gpu(accels):
    for rid in ("gb200", "gb300"):
        a = accels[rid]
        assert a.scaleup_domain == 72 and a.cooling == "liquid"
        assert a.bf16_tflops < 3000  # per GPU, not per superchip or per rack
