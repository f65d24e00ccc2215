#!/usr/bin/env python3
"""Draws the web app's icons (public/icons/*.png) with the standard library
only: the brand's stop square and go triangle, white on the accent blue.
`maskable` keeps the mark inside the safe zone (the inner 80 %), for
launchers that crop icons to a circle or a rounded square.

    python3 scripts/make-icons.py        # rewrites public/icons/
"""
import os
import struct
import zlib

ACCENT = (0x1F, 0x5F, 0xBF)
WHITE = (0xFF, 0xFF, 0xFF)


def png(size, pixel):
    rows = bytearray()
    for y in range(size):
        rows.append(0)  # no filter
        for x in range(size):
            rows.extend(pixel(x, y))
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
    header = struct.pack(">IIBBBBB", size, size, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(bytes(rows), 9)) + chunk(b"IEND", b"")


def icon(size, safe):
    """`safe`: the share of the side the mark may use."""
    margin = size * (1 - safe) / 2
    inner = size - 2 * margin
    # The square: the left 40 % of the mark; the triangle: the right 45 %.
    sq = (margin + inner * 0.05, margin + inner * 0.3, margin + inner * 0.45, margin + inner * 0.7)
    tri_x0, tri_x1 = margin + inner * 0.55, margin + inner * 0.95
    tri_y0, tri_y1 = margin + inner * 0.28, margin + inner * 0.72
    mid = (tri_y0 + tri_y1) / 2

    def pixel(x, y):
        cx, cy = x + 0.5, y + 0.5
        if sq[0] <= cx <= sq[2] and sq[1] <= cy <= sq[3]:
            return WHITE
        if tri_x0 <= cx <= tri_x1:
            half = (tri_y1 - tri_y0) / 2 * (1 - (cx - tri_x0) / (tri_x1 - tri_x0))
            if abs(cy - mid) <= half:
                return WHITE
        return ACCENT

    return png(size, pixel)


def main():
    out = os.path.join(os.path.dirname(__file__), "..", "public", "icons")
    os.makedirs(out, exist_ok=True)
    for name, size, safe in [("icon-192.png", 192, 0.9), ("icon-512.png", 512, 0.9), ("icon-maskable-512.png", 512, 0.7)]:
        with open(os.path.join(out, name), "wb") as f:
            f.write(icon(size, safe))


if __name__ == "__main__":
    main()
