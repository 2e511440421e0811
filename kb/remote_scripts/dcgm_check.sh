# shellcheck shell=sh
# GPU health: a quick `dcgmi diag` when the host has DCGM; nothing to check otherwise.
command -v dcgmi > /dev/null 2>&1 || exit 0
dcgmi diag -r 1
