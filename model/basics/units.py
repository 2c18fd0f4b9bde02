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
