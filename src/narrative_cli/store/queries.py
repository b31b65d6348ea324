"""The SQL statements of the session store (schema: migrations.py)."""

from __future__ import annotations

SELECT_SESSIONS = """
SELECT s.id, s.name, s.card_path, s.card_hash, s.character_name, s.user_name, s.settings,
       s.seed, s.greeting_index, s.created_at, s.updated_at, s.parent_id, s.parent_turn,
       s.chat_metadata,
       (SELECT MAX(t.number) FROM turns t WHERE t.session_id = s.id)
FROM sessions s"""

INSERT_SESSION = """
INSERT INTO sessions (name, card_path, card_hash, character_name, user_name, settings, seed,
                      greeting_index, chat_metadata, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"""

INSERT_LORE = "INSERT INTO session_lore (session_id, position, path, hash) VALUES (?, ?, ?, ?)"
SESSION_LORE = "SELECT path, hash FROM session_lore WHERE session_id = ? ORDER BY position"
ALL_LORE = "SELECT session_id, path, hash FROM session_lore ORDER BY session_id, position"

TOUCH_SESSION = "UPDATE sessions SET updated_at = ? WHERE id = ?"
RENAME_SESSION = "UPDATE sessions SET name = ? WHERE id = ?"
SET_CHAT_METADATA = "UPDATE sessions SET chat_metadata = ? WHERE id = ?"
SET_SETTINGS = "UPDATE sessions SET settings = ? WHERE id = ?"
DELETE_SESSION = "DELETE FROM sessions WHERE id = ?"

LAST_TURN = """
SELECT (SELECT MAX(t.number) FROM turns t WHERE t.session_id = s.id)
FROM sessions s WHERE s.id = ?"""

INSERT_TURN = "INSERT INTO turns (session_id, number, swipe_id, created_at) VALUES (?, ?, ?, ?)"
DELETE_TURN = "DELETE FROM turns WHERE session_id = ? AND number = ?"
SELECT_SWIPE = "UPDATE turns SET swipe_id = ? WHERE session_id = ? AND number = ?"

INSERT_SWIPE = """
INSERT INTO swipes (session_id, number, idx, record, snapshot, created_at)
VALUES (?, ?, ?, ?, ?, ?)"""
UPDATE_SWIPE = """
UPDATE swipes SET record = ?, snapshot = ? WHERE session_id = ? AND number = ? AND idx = ?"""
NEXT_SWIPE = "SELECT COALESCE(MAX(idx), -1) + 1 FROM swipes WHERE session_id = ? AND number = ?"
COUNT_SWIPES = "SELECT COUNT(*) FROM swipes WHERE session_id = ? AND number = ?"
TURN_ROOTS = "SELECT snapshot FROM swipes WHERE session_id = ? AND number = ?"
SESSION_ROOTS = "SELECT snapshot FROM swipes WHERE session_id = ?"

SELECTED_SWIPE = """
SELECT t.swipe_id,
       (SELECT COUNT(*) FROM swipes c WHERE c.session_id = t.session_id AND c.number = t.number),
       w.record, w.snapshot
FROM turns t
JOIN swipes w ON w.session_id = t.session_id AND w.number = t.number AND w.idx = t.swipe_id
WHERE t.session_id = ? AND t.number = ?"""

SELECTED_RECORDS = """
SELECT w.record
FROM turns t
JOIN swipes w ON w.session_id = t.session_id AND w.number = t.number AND w.idx = t.swipe_id
WHERE t.session_id = ? AND t.number BETWEEN ? AND ?
ORDER BY t.number"""

TURN_VIEWS = """
SELECT t.number, t.swipe_id,
       (SELECT COUNT(*) FROM swipes c WHERE c.session_id = t.session_id AND c.number = t.number),
       w.record, t.created_at
FROM turns t
JOIN swipes w ON w.session_id = t.session_id AND w.number = t.number AND w.idx = t.swipe_id
WHERE t.session_id = ?
ORDER BY t.number"""

ALL_SWIPES = """
SELECT t.number, t.swipe_id, t.created_at, w.record, w.snapshot, w.created_at
FROM turns t
JOIN swipes w ON w.session_id = t.session_id AND w.number = t.number
WHERE t.session_id = ?
ORDER BY t.number, w.idx"""

COPY_SESSION = """
INSERT INTO sessions (name, card_path, card_hash, character_name, user_name, settings, seed,
                      greeting_index, chat_metadata, parent_id, parent_turn, created_at,
                      updated_at)
SELECT ?, card_path, card_hash, character_name, user_name, settings, seed, greeting_index,
       chat_metadata, id, ?, ?, ?
FROM sessions WHERE id = ?"""
COPY_LORE = """
INSERT INTO session_lore (session_id, position, path, hash)
SELECT ?, position, path, hash FROM session_lore WHERE session_id = ?"""
COPY_TURNS = """
INSERT INTO turns (session_id, number, swipe_id, created_at)
SELECT ?, number, swipe_id, created_at FROM turns WHERE session_id = ? AND number <= ?"""
COPY_SWIPES = """
INSERT INTO swipes (session_id, number, idx, record, snapshot, created_at)
SELECT ?, number, idx, record, snapshot, created_at
FROM swipes WHERE session_id = ? AND number <= ?"""
