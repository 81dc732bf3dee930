import { cpuPercent, machineBusyPercent, parseMachineStat, parseProcessStat, ticksToMs } from './cpu';
import { parseResidentMiB } from './memory';

describe('the /proc readers', () => {
  it("takes utime + stime from a process's stat, whatever its command name holds", () => {
    // pid (comm) state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt utime stime ...
    const stat = '4242 (node (worker) 1) S 1 4242 4242 0 -1 4194560 9000 0 12 0 1500 250 3 1 20 0 11 0';
    expect(parseProcessStat(stat)).toBe(1750);
    expect(() => parseProcessStat('garbage')).toThrow(/stat/);
  });

  it("takes the machine's busy and total time from /proc/stat, idle and iowait not busy", () => {
    // user nice system idle iowait irq softirq steal guest guest_nice
    const text = 'cpu  100 5 50 800 20 3 2 0 7 0\ncpu0 50 2 25 400 10 1 1 0 3 0\n';
    expect(parseMachineStat(text)).toEqual({ busy: 160, total: 980 });
    expect(() => parseMachineStat('intr 1 2 3')).toThrow(/proc\/stat/);
    expect(machineBusyPercent({ busy: 160, total: 980 }, { busy: 210, total: 1_080 })).toBe(50);
    expect(machineBusyPercent(null, { busy: 1, total: 2 })).toBeNaN();
  });

  it('turns clock ticks into milliseconds and CPU time into a share of one core', () => {
    expect(ticksToMs(250, 100)).toBe(2_500);
    expect(ticksToMs(250, 250)).toBe(1_000);
    expect(cpuPercent(1_500, 1_000)).toBe(150);
    expect(cpuPercent(1, 0)).toBeNaN();
  });

  it('reads the resident memory from a process status', () => {
    expect(parseResidentMiB('Name:\tnode\nVmPeak:\t 900000 kB\nVmRSS:\t  358400 kB\n')).toBe(350);
    expect(parseResidentMiB('Name:\tkthreadd\n')).toBeNull();
  });
});
