// A file to the gateway through the resumable upload API (POST /uploads, PUT chunks with
// Content-Range, POST complete): progress as it goes, and a dropped connection resumes
// from the offset the gateway holds.
import { api, Problem } from "./portal.js";

const CHUNK = 1024 * 1024;
const MAX_RETRIES = 8;
const HASHED_UP_TO = 256 * 1024 * 1024;  // bigger files: the gateway's own digest only

const pause = (ms) => new Promise((resolve) => { setTimeout(resolve, ms); });

async function sha256(file) {
  if (!globalThis.crypto?.subtle || file.size > HASHED_UP_TO) return undefined;
  const digest = await crypto.subtle.digest("SHA-256", await file.arrayBuffer());
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** Upload `file`; `onProgress(done, total, note)` as bytes arrive. The completed upload. */
export async function uploadFile(file, onProgress = () => {}) {
  const digest = await sha256(file);
  const upload = await api("uploads", { method: "POST",
                                        body: { name: file.name, size: file.size, sha256: digest } });
  let offset = upload.offset;
  let failures = 0;
  onProgress(offset, file.size);
  while (offset < file.size) {
    const end = Math.min(offset + CHUNK, file.size);
    try {
      const written = await api(`uploads/${upload.id}`, {
        method: "PUT", body: file.slice(offset, end),
        headers: { "Content-Range": `bytes ${offset}-${end - 1}/${file.size}`,
                   "Content-Type": "application/octet-stream" },
      });
      offset = written.offset;
      failures = 0;
      onProgress(offset, file.size);
    } catch (error) {
      // A refusal is final, except 409 (the offset moved) and the gateway's own failures.
      if (error instanceof Problem && error.status !== 409 && error.status < 500) throw error;
      failures += 1;
      if (failures > MAX_RETRIES) throw error;
      onProgress(offset, file.size, "The connection dropped; resuming…");
      await pause(Math.min(250 * 2 ** failures, 8000));
      try {
        offset = (await api(`uploads/${upload.id}`)).offset;
      } catch (again) {
        if (again instanceof Problem && again.status < 500) throw again;
        // Still down: the next round tries again, from the offset known so far.
      }
    }
  }
  return api(`uploads/${upload.id}/complete`, { method: "POST", body: { sha256: digest } });
}
