"""Read-only migration assessment: convert's findings for every target, plus C++ extensions,
CUDA-only packages and a readiness grade (see commands.analyze)."""
