#!/usr/bin/env bash
# Fifty-fifth session, call 1: the fifty-fourth session's next_session_a.sh as it stands (the selective-scan GPU file
# whole, the A/B against 22dffcb, GPU fuzz). Its outputs are in call1/.
exec bash "$(dirname "$0")/../h200-2026-11-29-fiftyfourth/next_session_a.sh" "$@"
