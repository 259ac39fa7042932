create table if not exists quarantine (
    path varchar not null,
    reason varchar not null,          -- short code: truncated_json, empty_file, missing_columns, ...
    detail varchar,
    content_hash varchar,
    seen_at timestamp not null
);
