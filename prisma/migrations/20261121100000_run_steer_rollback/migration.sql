-- Runs remember a prompt staged while busy (ifBusy: "steer") and the position to restore when a branch run fails
-- or is cancelled before its first commit, so any process (a restarted api, another worker) can finish the job.

-- AlterTable
ALTER TABLE "runs" ADD COLUMN "steer" JSONB,
ADD COLUMN "rollback" JSONB;

-- CreateIndex
CREATE INDEX "runs_unfinished_idx" ON "runs"("status") WHERE "status" IN ('queued', 'running', 'paused');
