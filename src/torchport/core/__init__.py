"""Shared pipeline pieces: findings, text edits, text files, file trees, parallel runs."""
