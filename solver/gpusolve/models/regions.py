"""Region and city names, in English and Chinese, as people type them.

A user may write `苏南`, `southern Jiangsu`, `jiangsu-south`, `Suzhou` or `苏州`; all resolve
to a `Place` that matches catalogue offers by region id or by city. A city matches the colo
offers in that city and the cloud offers of its province (a cloud region has no city: a
team in Suzhou reaches a Jiangsu cloud region as well as any rack in town).
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass

# region id -> (names people use for the region, cities in it as (English, Chinese))
REGIONS: dict[str, tuple[tuple[str, ...], tuple[tuple[str, str], ...]]] = {
    "jiangsu-south": (
        ("苏南", "south jiangsu", "southern jiangsu", "sunan", "jiangsu south"),
        (
            ("Nanjing", "南京"),
            ("Suzhou", "苏州"),
            ("Wuxi", "无锡"),
            ("Changzhou", "常州"),
            ("Zhenjiang", "镇江"),
            ("Wujiang", "吴江"),
            ("Kunshan", "昆山"),
        ),
    ),
    "jiangsu-north": (
        ("苏北", "north jiangsu", "northern jiangsu", "subei", "jiangsu north"),
        (
            ("Xuzhou", "徐州"),
            ("Yancheng", "盐城"),
            ("Suqian", "宿迁"),
            ("Huai'an", "淮安"),
            ("Lianyungang", "连云港"),
        ),
    ),
    "jiangsu-central": (
        ("苏中", "central jiangsu", "suzhong"),
        (("Nantong", "南通"), ("Yangzhou", "扬州"), ("Taizhou", "泰州")),
    ),
    "shanghai": (("上海", "sh"), (("Shanghai", "上海"),)),
    "zhejiang": (("浙江",), (("Hangzhou", "杭州"), ("Ningbo", "宁波"), ("Jiaxing", "嘉兴"))),
    "beijing": (("北京",), (("Beijing", "北京"),)),
    "guangdong": (("广东",), (("Shenzhen", "深圳"), ("Guangzhou", "广州"))),
    "anhui": (("安徽",), (("Wuhu", "芜湖"), ("Hefei", "合肥"))),
    "inner-mongolia": (("内蒙古", "nei mongol"), (("Hohhot", "呼和浩特"), ("Ulanqab", "乌兰察布"))),
    "guizhou": (("贵州",), (("Guiyang", "贵阳"),)),
}
# Province-level names that cover several regions.
GROUPS: dict[str, tuple[str, ...]] = {
    "jiangsu": ("jiangsu-south", "jiangsu-north", "jiangsu-central"),
    "江苏": ("jiangsu-south", "jiangsu-north", "jiangsu-central"),
}


@dataclass(frozen=True)
class Place:
    """What a user's region word means: a set of regions, or one city (with the regions of
    its province, which its cloud offers may be in)."""

    term: str
    regions: frozenset[str] = frozenset()
    city: str | None = None

    def matches(self, region: str, city: str) -> bool:
        """Whether an offer in `region` (and `city`; "" for a cloud region) is in this place."""
        if self.city is not None and city:
            return _norm(city) == _norm(self.city) or _city_key(city) == _city_key(self.city)
        return region in self.regions


def province(region: str) -> frozenset[str]:
    """The regions of the province `region` is in (itself when it is a province alone)."""
    for regions in GROUPS.values():
        if region in regions:
            return frozenset(regions)
    return frozenset({region})


def _norm(text: str) -> str:
    return " ".join(text.strip().lower().replace("_", " ").replace("-", " ").split())


def _city_key(text: str) -> str:
    for _, (_, cities) in REGIONS.items():
        for en, zh in cities:
            if _norm(text) in (_norm(en), _norm(zh)) or text.strip() == zh:
                return en.lower()
    return _norm(text)


def _index() -> dict[str, Place]:
    index: dict[str, Place] = {}
    for region, (aliases, cities) in REGIONS.items():
        for name in (region, *aliases):
            index[_norm(name)] = Place(name, regions=frozenset({region}))
        for en, zh in cities:
            index.setdefault(_norm(en), Place(en, province(region), city=en))
            index.setdefault(_norm(zh), Place(zh, province(region), city=en))
    for name, regions in GROUPS.items():
        index[_norm(name)] = Place(name, regions=frozenset(regions))
    return index


_INDEX = _index()


def resolve(term: str, extra_regions: frozenset[str] = frozenset()) -> Place | None:
    """A Place for the term, or None if nobody knows it (catalogue regions count too)."""
    key = _norm(term)
    if key in _INDEX:
        place = _INDEX[key]
        return Place(term, place.regions, place.city)
    for region in extra_regions:
        if _norm(region) == key:
            return Place(term, regions=frozenset({region}))
    return None


def suggestions(term: str, extra: frozenset[str] = frozenset()) -> list[str]:
    names = [*(_INDEX), *(_norm(r) for r in extra)]
    return difflib.get_close_matches(_norm(term), names, n=3, cutoff=0.6)


def canonical_region(name: str) -> str | None:
    """The region id for a catalogue's region field written as an alias (e.g. 苏北)."""
    place = resolve(name)
    if place is None or place.city is not None or len(place.regions) != 1:
        return None
    return next(iter(place.regions))
