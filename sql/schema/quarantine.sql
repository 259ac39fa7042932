create table if not exists quarantine (
    path varchar not null,
    reason varchar not null,
    detail varchar,
    content_hash varchar,
    seen_at timestamp not null
);

comment on table quarantine is 'Inputs that could not be ingested, with a reason code.';
comment on column quarantine.path is 'path of the input';
comment on column quarantine.reason is 'short code: truncated_json, empty_file, missing_columns, ...';
comment on column quarantine.detail is 'one-line detail';
comment on column quarantine.content_hash is 'sha256 of the input when it could be read';
comment on column quarantine.seen_at is 'when the input was set aside';
