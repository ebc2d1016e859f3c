"""memplan's measurements: the 3D U-Net workload, isolated profiled runs, sweeps, DuckDB store.

Run ``memplan --help`` for the command line.
"""
