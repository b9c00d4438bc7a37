"""Pure, incremental content decoding of recorded bodies and streams (gzip, deflate, br, zstd),
capped against decompression bombs. Nothing here does I/O; the recorder's writer runs it after
the stream has passed through. The event streams themselves are read by shadowreplay.llmapi.
"""

from __future__ import annotations

import zlib


# A decompressed body (or stream) larger than this is refused: a few kB of gzip, brotli or zstd can
# expand to gigabytes inside the writer (a decompression bomb).
MAX_DECODED = 64 << 20


class DecodedTooLarge(ValueError):
    pass


class StreamDecoder:
    """Incremental content-encoding decoder (gzip, deflate, br, zstd) for streamed bodies, so the
    recorder keeps per-chunk timing even for compressed event streams. Never produces much more
    than `limit` bytes in all, whatever the compression ratio: past it, `decode` raises
    DecodedTooLarge, having produced at most one byte more (gzip, deflate, zstd) or one output
    buffer more (brotli grows its buffer in steps)."""

    def __init__(self, encoding: str | None, limit: int = MAX_DECODED) -> None:
        enc = (encoding or "identity").strip().lower()
        self.encoding = enc
        self.limit = limit
        self.produced = 0
        if enc in ("identity", ""):
            self._d = None
        elif enc in ("gzip", "x-gzip"):
            self._d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        elif enc == "deflate":
            self._d = zlib.decompressobj()
        elif enc == "br":
            import brotli

            self._d = brotli.Decompressor()
        elif enc == "zstd":
            try:
                from compression import zstd  # type: ignore[import-not-found]
            except ImportError:
                from backports import zstd  # type: ignore[no-redef]
            self._d = zstd.ZstdDecompressor()
        else:
            raise ValueError(f"unsupported content-encoding {enc!r}")

    def decode(self, data: bytes) -> bytes:
        if self._d is None or not data:
            return data
        out = bytearray()
        if self.encoding == "br":
            out += self._d.process(data, output_buffer_limit=self._room(out))
            while not self._d.can_accept_more_data() and self._room(out) > 1:
                out += self._d.process(b"", output_buffer_limit=self._room(out))
        elif self.encoding == "zstd":
            if getattr(self._d, "eof", False):
                return b""
            out += self._d.decompress(data, max_length=self._room(out))
            while not self._d.eof and not self._d.needs_input and self._room(out) > 1:
                out += self._d.decompress(b"", max_length=self._room(out))
        else:
            out += self._d.decompress(data, self._room(out))
            while self._d.unconsumed_tail and self._room(out) > 1:
                out += self._d.decompress(self._d.unconsumed_tail, self._room(out))
        self.produced += len(out)
        if self.produced > self.limit:
            raise DecodedTooLarge(f"decoded {self.encoding} body over {self.limit} bytes (a decompression bomb?): not decoded")
        return bytes(out)

    def _room(self, out: bytearray) -> int:
        """How much the next call may produce: what is left of the limit, plus one byte to see
        that the limit was passed."""
        return max(1, self.limit - self.produced - len(out) + 1)


def decode_body(data: bytes, encoding: str | None, limit: int = MAX_DECODED) -> bytes:
    """Decodes a complete body; raises ValueError (without any of the body in the message)."""
    try:
        d = StreamDecoder(encoding, limit)
        return d.decode(data)
    except ValueError:
        raise
    except Exception as e:
        raise ValueError(f"cannot decode content-encoding {encoding}: {type(e).__name__}") from None


def gaps_ms(times: list[float]) -> list[float]:
    return [round((b - a) * 1000.0, 3) for a, b in zip(times, times[1:])]
