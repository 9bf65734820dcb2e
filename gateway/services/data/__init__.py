"""Data: the files a job reads, before any site sees them.

`uploads` holds resumable uploads by content digest; `input_sources` names where an
input comes from (an upload, a URL, another job's output); `https_fetch` fetches URLs
with limits.
"""
