"""Stub torch for bench/convert_bench.py: the regex converter imports it and uses nothing."""
