"""The datasheet cards of the physics tests (tests/factories/hardware.py) are valid
catalogue cards on valid boards."""

from __future__ import annotations

from tests.factories.hardware import A100_80, H20, H100, L40S, RTX4090, hgx


def test_cards_are_valid_catalogue_cards() -> None:
    for c in (A100_80, H100, H20, L40S, RTX4090):
        assert c.tflops_at("bf16") is not None
        assert hgx(c).intra_bus_bytes_per_s(8) > 0
        assert hgx(c).group_bus_bytes_per_s(1, 2) > 0
