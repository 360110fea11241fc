"""The YAML reader: YAML 1.2 numbers, positions, merge keys."""

from __future__ import annotations

from pathlib import Path

from gpusolve.load.yamlio import read_yaml


def test_exponent_floats_without_sign_are_numbers(tmp_path: Path) -> None:
    path = tmp_path / "n.yaml"
    path.write_text("a: 3e9\nb: 2.0e8\nc: 12\nd: 1e\ne: -1.5E-3\nf: '3e9'\n")
    data = read_yaml(path).data
    assert data == {"a": 3e9, "b": 2e8, "c": 12, "d": "1e", "e": -1.5e-3, "f": "3e9"}
    assert isinstance(data["c"], int)


def test_positions_point_at_values_and_keys(tmp_path: Path) -> None:
    path = tmp_path / "p.yaml"
    path.write_text("top:\n  items:\n    - name: x\n      size: 4\n")
    doc = read_yaml(path)
    assert doc.locate(("top", "items", 0, "size")) == (4, 13)
    assert doc.locate(("top", "items", 0, "size"), key=True) == (4, 7)
    assert doc.locate(("top", "items", 0, "missing")) == (3, 7)  # nearest ancestor


def test_merge_keys_are_supported(tmp_path: Path) -> None:
    path = tmp_path / "m.yaml"
    path.write_text("base: &b {x: 1, y: 2}\nitem:\n  <<: *b\n  y: 3\n")
    assert read_yaml(path).data["item"] == {"x": 1, "y": 3}
