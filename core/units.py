"""Memory units: every stored figure is bytes; people read GiB (2^30 bytes)."""

GIB = 2**30


def format_gib(value_bytes: float) -> str:
    """``12.34 GiB``: bytes as binary gigabytes, two decimals."""
    return f"{value_bytes / GIB:.2f} GiB"
