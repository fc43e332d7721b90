// Prints Quartz 2.3.2's next fire times of a cron expression under a HolidayCalendar or an AnnualCalendar, as
// JSON lines: the oracle for ejserver's calendars (internal/calendar). A copy of tools/CronOracle.java that
// applies the calendar as Quartz's CronTriggerImpl does (a fire time the calendar does not include is skipped).
// Input lines: "<zone>\t<fromEpochMillis>\t<count>\t<expression>\t<calendarZone>\t<holiday|annual>\t<days>",
// days comma-separated, YYYY-MM-DD for holiday, MM-DD for annual.
// Run: apt-get install -y libquartz2-java; javac -cp /usr/share/java/quartz2.jar -d /tmp/co CalendarOracle.java
//      java -cp /tmp/co:/usr/share/java/quartz2.jar:/usr/share/java/slf4j-api.jar CalendarOracle < cases.tsv
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.util.Date;
import java.util.GregorianCalendar;
import java.util.TimeZone;
import org.quartz.Calendar;
import org.quartz.CronExpression;
import org.quartz.impl.calendar.AnnualCalendar;
import org.quartz.impl.calendar.HolidayCalendar;

public class CalendarOracle {
    public static void main(String[] args) throws Exception {
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank() || line.startsWith("#")) continue;
            String[] p = line.split("\t", 7);
            TimeZone calZone = TimeZone.getTimeZone(p[4]);
            Calendar cal;
            StringBuilder days = new StringBuilder();
            if (p[5].equals("holiday")) {
                HolidayCalendar h = new HolidayCalendar(calZone);
                for (String d : p[6].split(",")) {
                    String[] ymd = d.split("-");
                    GregorianCalendar g = new GregorianCalendar(calZone);
                    g.clear();
                    g.set(Integer.parseInt(ymd[0]), Integer.parseInt(ymd[1]) - 1, Integer.parseInt(ymd[2]), 12, 0, 0);
                    h.addExcludedDate(g.getTime());
                }
                cal = h;
            } else {
                AnnualCalendar a = new AnnualCalendar(calZone);
                for (String d : p[6].split(",")) {
                    String[] md = d.split("-");
                    GregorianCalendar g = new GregorianCalendar(calZone);
                    g.clear();
                    g.set(2000, Integer.parseInt(md[0]) - 1, Integer.parseInt(md[1]), 12, 0, 0); // 2000: a leap year
                    a.setDayExcluded(g, true);
                }
                cal = a;
            }
            for (String d : p[6].split(",")) {
                if (days.length() > 0) days.append(",");
                days.append("\"").append(d).append("\"");
            }
            StringBuilder out = new StringBuilder();
            out.append("{\"zone\":\"").append(p[0]).append("\",\"from\":").append(p[1])
               .append(",\"cron\":\"").append(p[3]).append("\",\"calendarZone\":\"").append(p[4])
               .append("\",\"kind\":\"").append(p[5]).append("\",\"days\":[").append(days).append("],\"next\":[");
            CronExpression ce = new CronExpression(p[3]);
            ce.setTimeZone(TimeZone.getTimeZone(p[0]));
            Date d = new Date(Long.parseLong(p[1]));
            int n = Integer.parseInt(p[2]);
            for (int i = 0; i < n; ) {
                d = ce.getNextValidTimeAfter(d);
                if (d == null) break;
                if (!cal.isTimeIncluded(d.getTime())) continue; // CronTriggerImpl skips what the calendar excludes
                if (i > 0) out.append(",");
                out.append(d.getTime());
                i++;
            }
            out.append("]}");
            System.out.println(out);
        }
    }
}
