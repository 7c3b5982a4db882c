"""Draw the bundled sticker images (groupmind/demo_data/stickers/*.png): one simple face
per sticker, 128x128 RGBA, written with the standard library only. Run once; the PNGs are
committed. ``python scripts/make_stickers.py``"""

from __future__ import annotations

import math
import struct
import zlib
from collections.abc import Callable
from pathlib import Path

SIZE = 128
OUT = Path(__file__).resolve().parents[1] / "groupmind" / "demo_data" / "stickers"
Pixel = tuple[int, int, int, int]
Canvas = list[list[Pixel]]

YELLOW, ORANGE, BROWN = (255, 205, 60, 255), (255, 150, 60, 255), (90, 55, 30, 255)
BLUE, RED, PINK, WHITE = (
    (70, 140, 230, 255),
    (230, 70, 70, 255),
    (255, 120, 170, 255),
    (255, 255, 255, 255),
)
GREEN, GREY = (80, 180, 100, 255), (150, 150, 150, 255)


def canvas() -> Canvas:
    return [[(0, 0, 0, 0)] * SIZE for _ in range(SIZE)]


def disc(c: Canvas, cx: float, cy: float, r: float, colour: Pixel) -> None:
    for y in range(max(0, int(cy - r)), min(SIZE, int(cy + r) + 1)):
        for x in range(max(0, int(cx - r)), min(SIZE, int(cx + r) + 1)):
            if (x - cx) ** 2 + (y - cy) ** 2 <= r * r:
                c[y][x] = colour


def arc(
    c: Canvas, cx: float, cy: float, r: float, a0: float, a1: float, colour: Pixel, w: float = 3
) -> None:
    for step in range(200):
        a = math.radians(a0 + (a1 - a0) * step / 199)
        disc(c, cx + r * math.cos(a), cy + r * math.sin(a), w, colour)


def rect(c: Canvas, x0: int, y0: int, x1: int, y1: int, colour: Pixel) -> None:
    for y in range(max(0, y0), min(SIZE, y1)):
        for x in range(max(0, x0), min(SIZE, x1)):
            c[y][x] = colour


def face(c: Canvas, colour: Pixel = YELLOW) -> None:
    disc(c, 64, 66, 54, BROWN)
    disc(c, 64, 66, 51, colour)


def eyes(c: Canvas, shape: str = "dot") -> None:
    for x in (46, 82):
        if shape == "dot":
            disc(c, x, 56, 6, BROWN)
        elif shape == "happy":
            arc(c, x, 60, 8, 200, 340, BROWN, 2.5)
        elif shape == "closed":
            arc(c, x, 54, 8, 20, 160, BROWN, 2.5)
        elif shape == "wide":
            disc(c, x, 54, 10, WHITE)
            disc(c, x, 54, 5, BROWN)


def smile(c: Canvas) -> None:
    arc(c, 64, 72, 22, 20, 160, BROWN)


def frown(c: Canvas) -> None:
    arc(c, 64, 100, 18, 210, 330, BROWN)


def open_mouth(c: Canvas, r: float = 12) -> None:
    disc(c, 64, 88, r, BROWN)
    disc(c, 64, 92, r * 0.55, RED)


def heart(c: Canvas, cx: float, cy: float, s: float, colour: Pixel = PINK) -> None:
    for y in range(SIZE):
        for x in range(SIZE):
            u, v = (x - cx) / s, (cy - y) / s
            if (u * u + v * v - 1) ** 3 - u * u * v**3 <= 0:
                c[y][x] = colour


def draw(kind: str) -> Canvas:
    c = canvas()
    if kind == "cat_nod" or kind == "cat_love":
        for x0 in (22, 84):  # ears
            for y in range(12, 40):
                for x in range(x0, x0 + 22):
                    if abs(x - (x0 + 11)) <= (y - 12) * 0.45:
                        c[y][x] = ORANGE
        face(c, ORANGE)
    elif kind == "coffee":
        face(c)
    else:
        face(c, {"cry": (255, 215, 110, 255), "shock": (255, 225, 120, 255)}.get(kind, YELLOW))
    parts: dict[str, Callable[[], None]] = {
        "hug": lambda: (eyes(c, "happy"), smile(c), arc(c, 64, 70, 62, 40, 140, ORANGE, 5)),
        "laugh": lambda: (eyes(c, "closed"), open_mouth(c, 16)),
        "thumbs_up": lambda: (
            eyes(c),
            smile(c),
            rect(c, 92, 84, 112, 116, ORANGE),
            rect(c, 98, 60, 108, 86, ORANGE),
        ),
        "cat_nod": lambda: (eyes(c, "happy"), smile(c)),
        "cheers": lambda: (
            eyes(c, "happy"),
            smile(c),
            rect(c, 90, 70, 116, 110, (250, 190, 40, 255)),
            rect(c, 90, 64, 116, 72, WHITE),
        ),
        "sleepy": lambda: (
            eyes(c, "closed"),
            disc(c, 64, 92, 5, BROWN),
            rect(c, 94, 14, 116, 18, BLUE),
            rect(c, 94, 30, 116, 34, BLUE),
        ),
        "coffee": lambda: (
            eyes(c, "closed"),
            frown(c),
            rect(c, 86, 84, 112, 116, WHITE),
            rect(c, 90, 88, 108, 100, BROWN),
        ),
        "confused": lambda: (
            eyes(c),
            arc(c, 64, 96, 10, 180, 360, BROWN),
            arc(c, 104, 24, 10, 180, 420, BLUE, 3),
            disc(c, 104, 46, 3, BLUE),
        ),
        "shock": lambda: (eyes(c, "wide"), open_mouth(c, 10)),
        "cry": lambda: (
            eyes(c, "closed"),
            frown(c),
            rect(c, 40, 62, 46, 100, BLUE),
            rect(c, 82, 62, 88, 100, BLUE),
        ),
        "food": lambda: (
            eyes(c, "happy"),
            open_mouth(c, 10),
            disc(c, 104, 100, 16, WHITE),
            disc(c, 104, 100, 10, GREEN),
        ),
        "travel": lambda: (
            eyes(c),
            smile(c),
            rect(c, 84, 80, 116, 116, BLUE),
            rect(c, 94, 72, 106, 80, BROWN),
        ),
        "code": lambda: (
            eyes(c),
            smile(c),
            rect(c, 18, 96, 110, 124, GREY),
            rect(c, 24, 100, 104, 120, (40, 40, 40, 255)),
        ),
        "cat_love": lambda: (heart(c, 46, 56, 9), heart(c, 82, 56, 9), smile(c)),
        "wave": lambda: (eyes(c, "happy"), smile(c), disc(c, 106, 40, 14, ORANGE)),
        "shrug": lambda: (
            eyes(c),
            rect(c, 50, 88, 78, 93, BROWN),
            rect(c, 4, 60, 22, 66, ORANGE),
            rect(c, 106, 60, 124, 66, ORANGE),
        ),
    }
    parts[kind]()
    return c


def png(c: Canvas) -> bytes:
    raw = b"".join(b"\x00" + b"".join(struct.pack("4B", *p) for p in row) for row in c)

    def chunk(tag: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + tag + data + struct.pack(">I", zlib.crc32(tag + data))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(raw, 9))
        + chunk(b"IEND", b"")
    )


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    kinds = ["hug", "laugh", "thumbs_up", "cat_nod", "cheers", "sleepy", "coffee", "confused",
             "shock", "cry", "food", "travel", "code", "cat_love", "wave", "shrug"]  # fmt: skip
    for kind in kinds:
        (OUT / f"{kind}.png").write_bytes(png(draw(kind)))
    print(f"{len(kinds)} stickers in {OUT}")


if __name__ == "__main__":
    main()
