import net from 'node:net';

/** Reads of a client connection land here; `chunk` is only valid during the call. */
export interface ClientReader {
  /** The next read's memory (`onread.buffer`): reused until a write keeps a chunk of it. */
  readBuffer(): Buffer;
  /** Bytes read into the buffer (back-pressure is the socket's pause()). */
  clientRead(chunk: Buffer): void;
}

/** What `net.Server` hands out that the public API does not name: the socket's libuv handle. */
interface WithHandle {
  _handle: object | null;
}

/**
 * Takes over a connection accepted paused (`pauseOnConnect`) as a socket that reads with
 * `onread`: into a buffer the connection reuses, straight to `reader`, with no Buffer
 * allocated per read and no readable-stream push / 'data' emit in between (net.Server
 * cannot give accepted sockets `onread`, so the handle moves to a new `net.Socket`, which
 * accepts `{ handle }` as the server itself does). The accepted socket, left without a
 * handle, is destroyed, which closes nothing. Null when the handle is not there to take
 * (a Node release that hides it): the caller reads `accepted` with 'data' events then.
 */
export function adoptClientSocket(accepted: net.Socket, reader: ClientReader, allowHalfOpen: boolean): net.Socket | null {
  const handle = (accepted as unknown as WithHandle)._handle;
  if (handle === null || handle === undefined || accepted.destroyed) return null;
  (accepted as unknown as WithHandle)._handle = null;
  accepted.destroy();
  const socket = new net.Socket({
    handle,
    allowHalfOpen,
    readable: true,
    writable: true,
    onread: {
      buffer: () => reader.readBuffer(),
      callback: (n: number, buf: Uint8Array) => {
        reader.clientRead((buf as Buffer).subarray(0, n));
        return true;
      },
    },
  } as net.SocketConstructorOpts);
  // Flowing, so EOF is emitted as 'end' (with onread nothing else reads the stream).
  socket.resume();
  return socket;
}
