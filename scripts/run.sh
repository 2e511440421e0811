#!/usr/bin/env bash
# `make run`: the embedded default. SQLite and a filesystem Celery broker under var/,
# the vocabulary and the starter knowledge base loaded, the web server and one worker.
set -euo pipefail
cd "$(dirname "$0")/.."

export DEBUG="${DEBUG:-True}"
PY=.venv/bin/python
mkdir -p var
# manage.py reads .env: with this one, the README's commands work in another terminal.
if [[ ! -e .env ]]; then
    printf '# Written by make run for local development (see .env.example).\nDEBUG=True\n' >.env
fi

$PY manage.py migrate --noinput
$PY manage.py load_vocabulary
$PY manage.py ingest knowledge/ --publish
# Search documents left behind by a killed run or read by older code (an upgrade).
$PY manage.py reindex_search

# One worker with the beat scheduler embedded: it sweeps stale validation runs.
$PY -m celery -A config worker --beat --schedule var/celerybeat-schedule \
    --loglevel INFO --concurrency 2 --logfile var/celery-worker.log &
worker=$!
stop() {
    kill -TERM "$worker" 2>/dev/null || true
    wait "$worker" 2>/dev/null || true
}
trap stop EXIT INT TERM

echo
echo "FixGraph is running at http://127.0.0.1:8000/  (Ctrl-C stops the web server and the worker)"
echo "An account to sign in with: .venv/bin/python manage.py users add NAME --reviewer --validator"
echo
$PY manage.py runserver 127.0.0.1:8000 --noreload
