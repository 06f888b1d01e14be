"""Porting CUDA C++ extensions: a C/C++ lexer, mapping tables applied per identifier, include and
file-name consistency, build glue, and inventories for targets whose kernels must be rewritten."""
