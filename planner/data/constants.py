"""Units and calendar constants, each named with its unit; every module takes them from here.

>>> HOURS_PER_YEAR == DAYS_PER_YEAR * HOURS_PER_DAY
True
>>> round(GiB / GB, 4)
1.0737
"""

HOURS_PER_DAY = 24.0
DAYS_PER_YEAR = 365.0
HOURS_PER_YEAR = DAYS_PER_YEAR * HOURS_PER_DAY  # 8,760 h: a system held all year
SECONDS_PER_HOUR = 3600.0
GB = 1e9  # vendors' memory sizes (H100: 80 GB)
GiB = 2.0**30  # what engines allocate in
