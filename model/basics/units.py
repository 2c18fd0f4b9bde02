"""Unit conversions. Everything inside the model is SI (bytes, FLOP, seconds)."""

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
TERA = 1e12
GIGA = 1e9
BYTES_PER_GB = 1e9  # decimal GB, as GPU datasheets print memory and bandwidth
BITS_PER_BYTE = 8
BF16_BYTES = 2
FP32_BYTES = 4
BYTES_PER_GIB = 2.0**30  # memory capacities: vendors' "GB" of HBM/GDDR are GiB


def duration(value_days: float, compact: bool = False) -> str:
    """Days, or hours below a day and minutes below an hour, so that a short run never
    reads '0.0 days' or '0.0 h'. Compact (a table cell): '7.7 h', '1.6 d', hours down to
    '0.1 h'."""
    hours = value_days * 24
    if hours < 1 and not compact:
        return f"{hours * 60:,.0f} min"
    if hours < 24:
        return f"{hours:,.1f} {'h' if compact else 'hours'}"
    return f"{value_days:,.1f} {'d' if compact else 'days'}"
