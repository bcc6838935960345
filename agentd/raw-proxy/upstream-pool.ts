import net from 'node:net';

/** Who is using an upstream connection right now; the pool routes its events there. */
export interface UpstreamOwner {
  onUpstreamData(up: Upstream, chunk: Buffer): void;
  /** The upstream finished sending (FIN). */
  onUpstreamEnd(up: Upstream): void;
  /** The connection is gone (after an error or not). */
  onUpstreamClose(up: Upstream): void;
}

const READ_BUFFER_BYTES = 64 * 1024;

/**
 * One loopback connection to a preview/runtime port. Its listeners are attached once,
 * when it is opened, and dispatch to the current owner: a reused connection costs no
 * listener churn per request.
 *
 * Reads land in one reused buffer (`onread`), not a fresh 64 KiB allocation and a
 * stream push per read. The chunk handed to the owner is only valid during the call:
 * an owner that keeps it (a write the kernel did not take at once) calls `retain()`,
 * and the next read goes to a new buffer.
 */
export class Upstream {
  owner: UpstreamOwner | null = null;
  /** Requests this connection has carried before the current one. */
  uses = 0;
  readonly socket: net.Socket;
  private buf = Buffer.allocUnsafe(READ_BUFFER_BYTES);
  private retained = false;

  constructor(
    readonly port: number,
    private readonly pool: UpstreamPool,
  ) {
    const socket = net.connect({
      port,
      host: '127.0.0.1',
      noDelay: true,
      onread: {
        buffer: () => {
          if (this.retained) {
            this.retained = false;
            this.buf = Buffer.allocUnsafe(READ_BUFFER_BYTES);
          }
          return this.buf;
        },
        callback: (n: number, buf: Uint8Array): boolean => {
          if (this.owner) this.owner.onUpstreamData(this, (buf as Buffer).subarray(0, n));
          else socket.destroy(); // bytes nobody asked for: the connection is out of step
          return true;
        },
      },
    });
    this.socket = socket;
    socket.on('end', () => {
      if (this.owner) this.owner.onUpstreamEnd(this);
      else socket.destroy();
    });
    socket.on('error', () => undefined); // 'close' follows and is handled there
    socket.on('close', () => {
      pool.forget(this);
      const owner = this.owner;
      this.owner = null;
      owner?.onUpstreamClose(this);
    });
  }

  /** The last chunk handed out is still referenced: read the next one elsewhere. */
  retain(): void {
    this.retained = true;
  }

  /** Back to the pool for the next request; only when its last response is complete. */
  release(): void {
    this.owner = null;
    this.pool.park(this);
  }

  destroy(): void {
    this.owner = null;
    this.socket.destroy();
  }
}

/** Keep-alive connections to 127.0.0.1:{port}, most recently used first. */
export class UpstreamPool {
  private readonly idle = new Map<number, Upstream[]>();
  private closed = false;
  /** Connections opened so far (for tests and diagnostics). */
  opened = 0;

  constructor(private readonly maxIdlePerPort = 64) {}

  acquire(port: number, owner: UpstreamOwner): Upstream {
    const stack = this.idle.get(port);
    let up: Upstream | undefined;
    while (stack && (up = stack.pop()) !== undefined) {
      if (!up.socket.destroyed && up.socket.writable) break;
      up = undefined;
    }
    if (up === undefined) {
      this.opened++;
      up = new Upstream(port, this);
    } else {
      up.uses++;
    }
    up.owner = owner;
    return up;
  }

  /** @internal Called by `Upstream.release`. */
  park(up: Upstream): void {
    const s = up.socket;
    if (this.closed || s.destroyed || !s.writable) return void s.destroy();
    let stack = this.idle.get(up.port);
    if (!stack) this.idle.set(up.port, (stack = []));
    if (stack.length >= this.maxIdlePerPort) return void s.destroy();
    stack.push(up);
  }

  /** @internal A connection closed: drop it from the idle stack if it sat there. */
  forget(up: Upstream): void {
    const stack = this.idle.get(up.port);
    if (!stack) return;
    const i = stack.lastIndexOf(up);
    if (i >= 0) stack.splice(i, 1);
  }

  idleCount(port: number): number {
    return this.idle.get(port)?.length ?? 0;
  }

  close(): void {
    this.closed = true;
    for (const stack of this.idle.values()) for (const up of stack.splice(0)) up.socket.destroy();
  }
}
