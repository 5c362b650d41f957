#!/usr/bin/env bash
# Prints the RINGGRAD_CUDA setting for a build of only what will run here: AUTO (CUDA code
# wherever nvcc is) when a GPU answers nvidia-smi, else OFF. scripts/test.sh builds AUTO always.
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then echo AUTO; else echo OFF; fi
