"""``groupmind import``: memories a bot already has, from the systems operators come from
(docs/import.md). Every record's scope is stated (by the record or by the operator), every
write is keyed by the record, so a second run adds nothing and a crashed run resumes."""
